"""The trained model's attention page in a real headless Chromium (Debian's): every head drawn,
the answer shown, nothing fetched."""

from pathlib import Path

from exercises.render.model_page import attention_page
from solutions.attention_maps import attention_maps
from solutions.checkpoint import load_model
from solutions.toy_tasks import ToyTask

MODELS = Path(__file__).resolve().parents[3] / "problem_bank" / "models"


def test_what_the_description_says_is_escaped_on_the_page():
    model, described = load_model(MODELS / "reverse.json")
    maps = attention_maps(model, ToyTask("reverse"), "31415")
    hostile = {**described, "recipe": {**described["recipe"], "task": "<script>alert(1)</script>"}}
    html = attention_page("<img src=x onerror=alert(1)>", hostile, maps)
    assert "<script>alert" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "&lt;img src=x" in html
    del hostile["held_out_exact_match"]
    assert "held-out exact match unknown" in attention_page("reverse", hostile, maps)


def test_the_page_draws_every_head_and_fetches_nothing(browser, tmp_path):
    model, described = load_model(MODELS / "reverse.json")
    maps = attention_maps(model, ToyTask("reverse"), "31415")
    path = tmp_path / "reverse.html"
    path.write_text(attention_page("reverse", described, maps), encoding="utf-8")
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    requests = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(path.as_uri())
    assert page.locator("svg.heatmap").count() == 16
    assert page.locator("section[data-kind=cross] svg.heatmap").count() == 4
    assert "Answer: 5 1 4 1 3 <eos>" in page.inner_text("body")
    box = page.locator("section[data-kind=cross] svg.heatmap").first.bounding_box()
    assert box["width"] > 100 and box["height"] > 100               # drawn, not collapsed
    page.screenshot(path=str(tmp_path / "reverse.png"), full_page=True)
    assert (tmp_path / "reverse.png").stat().st_size > 10_000
    assert requests == [path.as_uri()]
    page.close()
