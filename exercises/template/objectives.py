"""The lecture's six learning objectives; every template names exactly one."""

OBJECTIVES: dict[str, str] = {
    "contextual": "Explain why static embeddings and the encoder-decoder bottleneck both point "
                  "to attention",
    "bahdanau": "State Bahdanau attention (scores, softmax weights, context) and the family of "
                "alignment-score functions",
    "self_attention": "Derive scaled dot-product self-attention softmax(QKᵀ/√d_k)V and compute "
                      "it by hand on 4 tokens",
    "scaling": "Explain why the softmax is scaled by √d_k and what breaks without it",
    "multihead_masking": "Describe multi-head attention, and causal masking for parallel "
                         "left-to-right decoder training",
    "bert": "Connect BERT's MLM and NSP objectives to cross-entropy, backprop and tokenization",
}
