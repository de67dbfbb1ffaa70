"""The hand-written twins of the layers and the rest of the lecture: Bahdanau alignment, layer
norm, positional encodings, embeddings, encoder and decoder layers, BERT's losses, the
backward passes and WordPiece.
"""

from __future__ import annotations


import numpy as np

from .._shapes import as_float
from ..alignment import AlignmentStep, additive_score, attend
from ..attention import attention_backward
from ..bert import KEEP, MASK, RANDOM, UNCHANGED, MLMSelection, mlm_loss
from ..feed_forward import ffn
from ..layer_norm import layer_norm
from ..losses import IGNORE_INDEX, cross_entropy, softmax_cross_entropy_backward
from ..multihead import multi_head_attention
from ..positional import embed
from ..tokenization import CONTINUATION, UNK, tokenize_words
from .registry import twin


# --- Bahdanau alignment ---------------------------------------------------------------------

@twin("additive_score",
      "additive scores without the tanh: v · (s W + h_j U)",
      "The additive score is a small network with one hidden layer: v · tanh(s W + h_j U). "
      "Apply the tanh to each hidden unit before taking the dot product with v; without it the "
      "score is a linear function of s and h_j, and every score changes.",
      "(s @ W + H @ U) @ v                    # should be np.tanh(s @ W + H @ U) @ v")
def additive_score_no_tanh(s, H, W, U, v):
    s, H = as_float(s, "s"), as_float(H, "H")
    return ((s @ as_float(W, "W"))[..., None, :] + H @ as_float(U, "U")) @ as_float(v, "v")


@twin("bahdanau_step",
      "alignment scores without the tanh: e_ij = v · (s_{i−1} W + h_j U)",
      "The alignment model is a small network with one hidden layer: "
      "e_ij = v · tanh(s_{i−1} W + h_j U). Apply the tanh to each hidden unit before taking the "
      "dot product with v; without it the scores are linear in s_{i−1} and h_j, and the "
      "weights and the context change too.",
      "e = (s_prev @ W + H @ U) @ v           # should be np.tanh(s_prev @ W + H @ U) @ v")
def bahdanau_step_no_tanh(s_prev, H, W, U, v, mask=None):
    scores = additive_score_no_tanh(s_prev, H, W, U, v)
    weights, context = attend(scores, H, mask)
    return AlignmentStep(scores, weights, context)


@twin("bahdanau_step",
      "the context built from the raw scores e instead of the softmax weights α",
      "The scores e_ij are unnormalised; the context is c_i = Σ_j α_ij h_j with "
      "α_ij = softmax_j(e_ij), a weighted average of the encoder states.",
      "c = e @ H                              # should be c = softmax(e) @ H")
def bahdanau_step_unnormalised(s_prev, H, W, U, v, mask=None):
    scores = additive_score(s_prev, H, W, U, v)
    weights, _ = attend(scores, H, mask)
    context = (scores[..., None, :] @ as_float(H, "H"))[..., 0, :]
    return AlignmentStep(scores, weights, context)


# --- layer norm, positions, embeddings, layers -----------------------------------------------

@twin("layer_norm",
      "layer norm computed over the tokens (axis -2) instead of over each token's features",
      "LayerNorm normalises each token's d_model features (axis=-1); statistics over the "
      "sequence axis are closer to batch norm and leak information between tokens.",
      "mu = x.mean(axis=-2, keepdims=True)    # should be axis=-1")
def layer_norm_over_tokens(x, gamma, beta, eps=1e-5):
    x = as_float(x, "x")
    mu = x.mean(axis=-2, keepdims=True)
    var = x.var(axis=-2, keepdims=True)
    return as_float(gamma, "gamma") * (x - mu) / np.sqrt(var + eps) + as_float(beta, "beta")


@twin("layer_norm",
      "normalised by the unbiased std with ε added to the std (Annotated-Transformer style)",
      "nn.LayerNorm divides by √(σ² + ε) with the biased variance (÷D). The unbiased std "
      "(÷(D−1)) shrinks every output by √((D−1)/D), 0.935 at D = 8.",
      "(x - mu) / (x.std(-1, ddof=1) + eps)   # should be (x - mu) / np.sqrt(x.var(-1) + eps)")
def layer_norm_unbiased_std(x, gamma, beta, eps=1e-5):
    x = as_float(x, "x")
    mu = x.mean(axis=-1, keepdims=True)
    std = x.std(axis=-1, ddof=1, keepdims=True)
    return as_float(gamma, "gamma") * (x - mu) / (std + eps) + as_float(beta, "beta")


def _angles(L, d_model, exponent):
    return np.arange(L)[:, None] / 10000.0 ** (exponent[None, :] / d_model)


@twin("positional_encoding",
      "sin and cos swapped (cos on even columns), so PE[0] = [1, 0, 1, 0, …]",
      "PE(pos, 2i) = sin(…) and PE(pos, 2i+1) = cos(…): even columns take the sine.",
      "pe[:, 0::2] = np.cos(angle)            # should be np.sin(angle)")
def positional_encoding_sin_cos_swapped(L, d_model):
    angle = _angles(L, d_model, np.arange(0, d_model, 2))
    pe = np.empty((L, d_model))
    pe[:, 0::2], pe[:, 1::2] = np.cos(angle), np.sin(angle)
    return pe


@twin("positional_encoding",
      "sines and cosines concatenated in two halves instead of interleaved",
      "The paper interleaves: column 2i is sin, 2i+1 is cos of the same frequency. "
      "[sin | cos] halves give PE[0] = [0…0, 1…1] (seen in tensor2tensor #391).",
      "np.concatenate([np.sin(angle), np.cos(angle)], -1)  # should interleave 0::2 / 1::2")
def positional_encoding_concatenated(L, d_model):
    angle = _angles(L, d_model, np.arange(0, d_model, 2))
    return np.concatenate([np.sin(angle), np.cos(angle)], axis=-1)


@twin("positional_encoding",
      "frequency exponent j/d_model for column j instead of 2⌊j/2⌋/d_model",
      "Columns 2i and 2i+1 share one frequency, 1/10000^(2i/d_model); using the column index j "
      "gives every odd column the wrong frequency.",
      "10000 ** (j / d_model)                 # should be 10000 ** (2 * (j // 2) / d_model)")
def positional_encoding_exponent_j(L, d_model):
    angle = _angles(L, d_model, np.arange(d_model))
    pe = np.empty((L, d_model))
    pe[:, 0::2], pe[:, 1::2] = np.sin(angle[:, 0::2]), np.cos(angle[:, 1::2])
    return pe


@twin("embed",
      "token embeddings used without the ×√d_model scale",
      "The Transformer multiplies embeddings by √d_model before adding the positional "
      "encoding, so the two have comparable size.",
      "table[tokens]                          # should be table[tokens] * np.sqrt(d_model)")
def embed_no_sqrt_d_model(tokens, table):
    return embed(tokens, table) / np.sqrt(np.shape(table)[1])


@twin("encoder_layer",
      "pre-LN instead of post-LN: x + Sublayer(LayerNorm(x))",
      "The lecture's (and the paper's) layer is post-LN: LayerNorm(x + Sublayer(x)). Pre-LN "
      "normalises the sublayer input instead, and its output is not normalised.",
      "h = x + attn(layer_norm(x))            # should be h = layer_norm(x + attn(x))")
def encoder_layer_pre_ln(x, params, num_heads, mask=None, eps=1e-5, return_weights=False):
    normed = layer_norm(x, **params["norm1"], eps=eps)
    attended, weights = multi_head_attention(normed, normed, normed, params["self_attn"],
                                             num_heads, mask)
    h = as_float(x, "x") + attended
    out = h + ffn(layer_norm(h, **params["norm2"], eps=eps), **params["ffn"])
    return (out, {"self_attn": weights}) if return_weights else out


@twin("decoder_layer",
      "pre-LN instead of post-LN in the decoder: y + Sublayer(LayerNorm(y)) for all three sublayers",
      "The lecture's (and the paper's) decoder layer is post-LN: LayerNorm(y + Sublayer(y)) after "
      "masked self-attention, cross-attention and the FFN alike.",
      "h = y + self_attn(layer_norm(y))       # should be h = layer_norm(y + self_attn(y))")
def decoder_layer_pre_ln(y, memory, params, num_heads, self_mask=None, memory_mask=None,
                         eps=1e-5, return_weights=False):
    normed = layer_norm(y, **params["norm1"], eps=eps)
    attended, self_weights = multi_head_attention(normed, normed, normed, params["self_attn"],
                                                  num_heads, self_mask)
    h1 = as_float(y, "y") + attended
    crossed, cross_weights = multi_head_attention(layer_norm(h1, **params["norm2"], eps=eps),
                                                  memory, memory, params["cross_attn"],
                                                  num_heads, memory_mask)
    h2 = h1 + crossed
    out = h2 + ffn(layer_norm(h2, **params["norm3"], eps=eps), **params["ffn"])
    if return_weights:
        return out, {"self_attn": self_weights, "cross_attn": cross_weights}
    return out


# --- BERT -----------------------------------------------------------------------------------

@twin("mlm_loss",
      "cross-entropy averaged over every position, not only the selected (masked) ones",
      "MLM predicts only the ~15% selected positions; the other tokens were visible in the "
      "input, and including them rewards copying.",
      "cross_entropy(logits, tokens)          # should skip unselected positions (label −100)")
def mlm_loss_every_position(logits, tokens, selected):
    return cross_entropy(logits, np.asarray(tokens))


@twin("mlm_loss",
      "the selected positions' loss summed but divided by all T positions (scaled by n_sel/T)",
      "The mean runs over the selected positions only: Σ_{i∈M} CE_i / |M|. Dividing by T "
      "shrinks the loss by |M|/T.",
      "loss = ce[selected].sum() / T          # should be ce[selected].mean()")
def mlm_loss_divided_by_all_tokens(logits, tokens, selected):
    selected = np.asarray(selected, dtype=bool)
    return mlm_loss(logits, tokens, selected) * selected.sum() / selected.size


@twin("mlm_select",
      "80/10/10 applied to every token instead of to the 15% selected",
      "First 15% of the positions are selected; only those are corrupted, 80% to [MASK], 10% to "
      "a random token, 10% unchanged — and only those enter the loss.",
      "for every position: u < 0.8 → [MASK] … # should first select 15% of the positions")
def mlm_select_every_token(tokens, rng, vocab_size, mask_id, special_ids=(), select_prob=0.15):
    tokens = np.asarray(tokens)
    rng = np.random.default_rng(rng)
    u = rng.random(len(tokens))
    random_ids = rng.integers(0, vocab_size, size=len(tokens))
    candidate = ~np.isin(tokens, list(special_ids))
    actions = np.where(candidate, np.where(u < 0.8, MASK,
                                           np.where(u < 0.9, RANDOM, UNCHANGED)), KEEP)
    inputs = np.where(actions == MASK, mask_id,
                      np.where(actions == RANDOM, random_ids, tokens))
    selected = actions != KEEP
    return MLMSelection(inputs, selected, np.where(selected, tokens, IGNORE_INDEX), actions)


# --- backward passes ------------------------------------------------------------------------

@twin("softmax_backward",
      "softmax gradient using only the Jacobian's diagonal p(1 − p)",
      "∂p_i/∂z_j = p_i(δ_ij − p_j): every output depends on every input. Keeping only the "
      "diagonal drops −p_i p_j, and the gradient rows stop summing to 0.",
      "dz = dp * p * (1 - p)                  # should be p * (dp - (dp * p).sum(-1, keepdims=True))")
def softmax_backward_diagonal_only(dp, cache):
    p = cache
    return as_float(dp, "dp") * p * (1.0 - p)


@twin("softmax_cross_entropy_backward",
      "cross-entropy gradient not divided by the number of targets N",
      "The loss is a mean over N targets, so its gradient is (P − onehot)/N.",
      "dz = P - onehot                        # should be (P - onehot) / N")
def softmax_cross_entropy_backward_not_averaged(dloss, cache):
    count = cache.count
    return softmax_cross_entropy_backward(dloss, cache) * count


@twin("attention_backward",
      "dQ and dK without the 1/√d_k factor of the forward scale",
      "S = QKᵀ/√d_k, so by the chain rule dQ = dS K/√d_k and dK = dSᵀQ/√d_k.",
      "dQ = dS @ K                            # should be dS @ K / np.sqrt(d_k)")
def attention_backward_no_scale(dZ, cache):
    dQ, dK, dV = attention_backward(dZ, cache)
    scale = cache.scale
    return dQ / scale, dK / scale, dV


# --- WordPiece ------------------------------------------------------------------------------

@twin("wordpiece_tokenize",
      "pieces after the first looked up without the \"##\" continuation prefix",
      "In WordPiece a piece inside a word is a different vocabulary entry from the same letters "
      "starting a word: \"##ing\" is not \"ing\". Look up continuation pieces with \"##\".",
      "piece = word[start:end]               # should be '##' + word[start:end] when start > 0")
def wordpiece_tokenize_no_prefix(text, vocab, unk=UNK):
    def split_word(word, vocab, unk):
        pieces, start = [], 0
        while start < len(word):
            end = len(word)
            while end > start and word[start:end] not in vocab:
                end -= 1
            if end == start:
                return [unk]
            pieces.append(word[start:end])
            start = end
        return pieces
    return tokenize_words(text, vocab, unk, split_word)


@twin("wordpiece_tokenize",
      "the shortest matching piece taken first instead of the longest",
      "WordPiece is greedy longest-match-first: at each position it takes the longest "
      "vocabulary entry, so common words stay whole (\"playing\" → play ##ing, not p ##l …).",
      "end = start + 1 and grow               # should start from end = len(word) and shrink")
def wordpiece_tokenize_shortest_first(text, vocab, unk=UNK):
    def split_word(word, vocab, unk):
        pieces, start = [], 0
        while start < len(word):
            for end in range(start + 1, len(word) + 1):
                piece = word[start:end] if start == 0 else CONTINUATION + word[start:end]
                if piece in vocab:
                    break
            else:
                return [unk]
            pieces.append(piece)
            start = end
        return pieces
    return tokenize_words(text, vocab, unk, split_word)
