"""engine/base/lines.py: a reason is one line of at most 300 characters."""
from engine.base.lines import error_line, one_line


def test_a_short_first_line_is_kept_as_it_is():
    assert one_line("\n  ValueError: boom  \nTraceback ...") == "ValueError: boom"
    assert one_line(None) == ""


def test_a_long_line_is_cut_to_the_limit_and_names_its_log():
    cut = one_line("x" * 65_574, log="/s/pairs/cmp-1/run.stderr")
    # 42 = len("... (all of it: ") 16 + the path 25 + ")" 1
    assert len(cut) == 300 and cut == "x" * (300 - 42) + "... (all of it: /s/pairs/cmp-1/run.stderr)"
    assert one_line("y" * 400) == "y" * 297 + "..."


def test_a_cut_reason_quoted_in_a_longer_one_keeps_its_log():
    inner = one_line("x" * 1000, limit=280, log="/l")
    outer = one_line(f"pair 1 failed (baseline command: {inner}); 0 complete pairs kept")
    assert len(outer) == 300 and outer.endswith("... (all of it: /l)") and outer.startswith("pair 1 failed (")


def test_a_peer_error_with_the_python_stack_in_it_is_stored_as_its_first_real_line():
    # Every process that trains reports an error through error_line: the worker, the LR range
    # test's and the quick benchmark's.
    # What the chief stored once when its peer was killed (TF puts the op's Python stack in the text).
    class UnavailableError(Exception):
        pass

    text = ("Graph execution error:\n\nDetected at node CollectiveReduceV2 defined at (most recent call last):\n"
            '  File "<frozen runpy>", line 198, in _run_module_as_main\n'
            '  File "/work/engine/training/train.py", line 90, in train\n'
            "Collective ops is aborted by: failed to connect to all addresses\n"
            "  [[{{node CollectiveReduceV2}}]]")
    assert error_line(UnavailableError(text)) == (
        "UnavailableError: Collective ops is aborted by: failed to connect to all addresses")


def test_out_of_memory_says_what_to_do_and_our_own_errors_keep_their_words():
    class ResourceExhaustedError(Exception):
        pass

    class DeviceError(Exception):
        pass

    assert error_line(ResourceExhaustedError("OOM when allocating tensor")) == (
        "out of memory: OOM when allocating tensor; use a smaller batch_size or model")
    assert error_line(DeviceError("no GPU here; use device_type cpu")) == "no GPU here; use device_type cpu"
    assert len(error_line(ValueError("x" * 1000))) == 300
