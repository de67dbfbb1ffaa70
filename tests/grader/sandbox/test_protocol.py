"""The protocol's constructors build exactly the messages the server and the client take: each
is pinned here against the literal dict (its keys in order: a frame encodes a dict in its
order), so a change to the wire shows up here first."""

from grader.sandbox import frames, protocol


def same(built: dict, literal: dict) -> bool:
    """Equal, with the keys in the same order, and encoded to the same frame."""
    return (built == literal and list(built) == list(literal)
            and frames.encode(built) == frames.encode(literal))


def test_each_step_is_the_dict_the_server_runs():
    assert same(protocol.exec_step("p1-a", "x = 1"), {"op": "exec", "label": "p1-a", "source": "x = 1"})
    assert same(protocol.set_step({"Q": [1.0]}), {"op": "set", "values": {"Q": [1.0]}})
    assert same(protocol.send_step("p1", ["x", "y"]), {"op": "send", "problem": "p1", "names": ["x", "y"]})
    assert same(protocol.call_step("p2", "f", [{"a": 1}, {"a": 2}]),
                {"op": "call", "problem": "p2", "function": "f", "cases": [{"a": 1}, {"a": 2}], "first": 0})
    assert same(protocol.call_step("p2", "f", [], first=3),
                {"op": "call", "problem": "p2", "function": "f", "cases": [], "first": 3})
    assert protocol.OPS == ("exec", "set", "send", "call")


def test_a_job_carries_a_calls_count_never_its_cases():
    steps = [protocol.exec_step("a", "x = 1"), protocol.call_step("p", "f", [{"a": 1}, {"a": 2}], first=1)]
    job = protocol.job(steps, {"wall_seconds": 1.0})
    assert same(job, {"steps": [{"op": "exec", "label": "a", "source": "x = 1"},
                                {"op": "call", "problem": "p", "function": "f", "first": 1, "count": 2}],
                      "limits": {"wall_seconds": 1.0}})
    assert job["steps"][0] is steps[0] and "cases" in steps[1]          # the caller's steps are untouched
    assert protocol.is_job(job) and not protocol.is_job({"problem": "p", "case": 0, "args": {}})
    assert not protocol.is_job({"steps": "x"}) and not protocol.is_job(None)


def test_a_case_frame_is_what_the_child_waits_for():
    frame = protocol.case_frame("p", 3, {"a": 1})
    assert same(frame, {"problem": "p", "case": 3, "args": {"a": 1}})
    assert protocol.is_case(frame, "p", 3)
    assert not protocol.is_case(frame, "p", 2) and not protocol.is_case(frame, "q", 3)
    assert not protocol.is_case({"problem": "p", "case": 3, "args": [1]}, "p", 3)


def test_each_event_is_the_dict_the_client_takes():
    walls = [{"name": "fds", "active": True, "detail": ""}]
    pinned = [
        (protocol.ready_event(walls), {"event": "ready", "layers": walls}),
        (protocol.start_event(2), {"event": "start", "step": 2}),
        (protocol.start_event(2, 0), {"event": "start", "step": 2, "case": 0}),
        (protocol.need_event(2, 1), {"event": "need", "step": 2, "case": 1}),
        (protocol.error_event(1, "a", "NameError", "name 'x' is not defined", 3),
         {"event": "error", "step": 1, "label": "a", "type": "NameError",
          "message": "name 'x' is not defined", "line": 3}),
        (protocol.values_event("p", {"x": 1}, ["y"]),
         {"event": "values", "problem": "p", "values": {"x": 1}, "missing": ["y"]}),
        (protocol.output_event("p", 0, 1.5), {"event": "output", "problem": "p", "case": 0, "ok": True, "value": 1.5}),
        (protocol.failed_output_event("p", 1, "TypeError: no"),
         {"event": "output", "problem": "p", "case": 1, "ok": False, "error": "TypeError: no"}),
        (protocol.done_event(), {"event": "done"}),
        (protocol.exit_event("exit 0"), {"event": "exit", "reason": "exit 0"}),
    ]
    for built, literal in pinned:
        assert same(built, literal), literal
    assert protocol.EVENTS == ("ready", "start", "need", "error", "values", "output", "done", "exit")


def test_the_exit_reasons():
    assert (protocol.exited(0), protocol.exited(3), protocol.signalled(11)) == ("exit 0", "exit 3", "signal 11")
    assert (protocol.TIMEOUT, protocol.MEMORY, protocol.STOPPED) == ("timeout", "memory", "stopped")


def test_the_protocol_imports_only_the_standard_library():
    import ast
    import sys

    with open(protocol.__file__) as f:
        tree = ast.parse(f.read())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module and node.level == 0}
    assert not any(isinstance(node, ast.ImportFrom) and node.level for node in ast.walk(tree))
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}
