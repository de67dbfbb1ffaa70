"""A trained toy model's attention on one page (``attnkit model attention --html``): the input,
the model's answer, and every head's weights as a heatmap — the encoder's self-attention, the
decoder's causal self-attention and its cross-attention — self-contained, opening offline."""

from __future__ import annotations

from exercises.render.html import escape, heatmap_svg, page

KINDS = {"self": "self-attention", "cross": "cross-attention (queries: decoder, keys: encoder)"}
# Four heads side by side on a wide screen (the shared page keeps text to 46em for reading).
GRID_CSS = ("<style>body { max-width: 100em; } .heads { display: flex; flex-wrap: wrap; gap: 0 1.2em; }"
            "</style>")


def _tokens(tokens: list[str]) -> str:
    return " ".join(f"<code>{escape(t)}</code>" for t in tokens)


def _summary(described: dict, maps) -> str:
    config = described["config"]
    task = described.get("recipe", {}).get("task", "?")
    accuracy = described.get("held_out_exact_match")
    scored = "unknown" if accuracy is None else f"{100 * float(accuracy):.1f} %"
    return (f"<p>Task: <b>{escape(task)}</b>. {int(config['num_encoder_layers'])} encoder and "
            f"{int(config['num_decoder_layers'])} decoder layers, d_model = {int(config['d_model'])}, "
            f"{int(config['num_heads'])} heads, {int(described['parameters']):,} parameters; held-out "
            f"exact match {escape(scored)}.</p>"
            f"<p>Input: {_tokens(maps.source)}<br>Answer: {_tokens(maps.output)}</p>"
            "<p>Each map: rows are the queries, columns the keys; a row sums to 1 (white 0, darkest "
            "blue 1, on every map alike). The decoder "
            "reads &lt;bos&gt; and the answer so far (the teacher-forced pass over its own answer: "
            "the same rows greedy decoding computed one step at a time).</p>")


def _section(layer: str, kind: str, heads) -> str:
    maps = "".join(heatmap_svg(h.weights, h.rows, h.cols, title=f"head {h.head}", value_range=(0.0, 1.0))
                   for h in heads)
    return (f'<section class="layer" data-layer="{escape(layer)}" data-kind="{escape(kind)}">'
            f"<h2>{escape(layer)}: {escape(KINDS[kind])}</h2><div class=\"heads\">{maps}</div></section>")


def attention_page(name: str, described: dict, maps) -> str:
    """The page of ``maps`` (solutions.attention_maps.AttentionMaps) for model ``name``
    (``described``: its .json)."""
    groups: dict[tuple[str, str], list] = {}
    for head in maps.maps:
        groups.setdefault((head.layer, head.kind), []).append(head)
    body = (GRID_CSS + f"<h1>Inside the model {escape(name)}</h1>" + _summary(described, maps)
            + "".join(_section(layer, kind, heads) for (layer, kind), heads in groups.items()))
    return page(f"{name}: attention", body)
