"""Self-checks for Chapter 5, multi-head attention: each exercise as a table."""

from __future__ import annotations

import torch

from .._validate import require_int
from ._common import as_shape, expect_dict, shape_mismatch
from ._kit import Case, call, exercise_check, passed, require_callable, seeded
from .table import Exercise, Slip

# fmt: off
_LIST, _NUMBER = (list, tuple, range), (int, float)
_FORGOT = ": did your function forget to `return` it?"


# --- ch05-ex-heads: the head counts that a width allows ------------------------------
def _counts_wrong(got, expected, subject):
    """The counts of a wrong list that are not valid, and the valid ones it lacks."""
    if not isinstance(got, _LIST):
        return f"it is {got!r}, not a list of ints such as [1, 2, 4, 8]" + _FORGOT * (
            got is None)
    extra = [h for h in got if h not in expected][:8]
    missing = [h for h in expected if h not in got][:8]
    parts = [f"it includes {extra}, which do not divide d_out"] * bool(extra)
    parts += [f"it misses {missing}"] * bool(missing)
    return ", and ".join(parts) or "list each valid count once, in increasing order"


_DIVISORS = "    return [h for h in range({}) if d_out % h == 0]\n"
HEAD_COUNTS = Exercise(
    label="ch05-ex-heads", check="check_head_counts_fn", parameter="fn",
    function="valid_head_counts(d_out)", output="list",
    right=_DIVISORS.format("1, d_out + 1"),
    cases=((12,), (8,), (7,), (1,), (768,), (1024,)), describe="d_out = {}".format,
    rule="every divisor h of d_out, from 1 to d_out itself, in increasing order: "
    "d_out must split into h heads of a whole width d_out // h",
    same=lambda got, want: isinstance(got, _LIST) and list(got) == want,
    otherwise=_counts_wrong,
    slips=(Slip("no-ends", tuple(map(_DIVISORS.format, ("2, d_out", "1, d_out",
                                                         "2, d_out + 1"))),
                "1 and d_out are valid too: one head of width {d_out}, or {d_out} "
                "heads of width 1"),),
)
check_head_counts_fn = HEAD_COUNTS.make_check()


# --- ch05-ex-params: the parameters of MultiHeadAttention ----------------------------
_COUNT = "    return 3 * ({}) + {}\n".format
_QKV, _OUT = "d_in * d_out + (d_out if qkv_bias else 0)", "d_out * d_out + d_out"
PARAMS = Exercise(
    label="ch05-ex-params", check="check_param_count_fn", parameter="fn",
    function="count_parameters(d_in, d_out, num_heads, qkv_bias)", output="count",
    right="    from attn_course import MultiHeadAttention\n"  # the real module's count
    '    with torch.device("meta"):  # no memory, no random numbers\n'
    "        m = MultiHeadAttention(d_in, d_out, 1, 0.0, num_heads, qkv_bias)\n"
    "    return sum(p.numel() for p in m.parameters())\n",
    cases=((5, 2, 2, False), (3, 8, 4, True), (10, 12, 3, False), (5, 2, 2, True),
           (512, 256, 8, False), (768, 768, 1, True), (768, 768, 12, True)),
    describe="d_in={}, d_out={}, num_heads={}, qkv_bias={}".format,
    rule="count the weights and biases of W_query, W_key and W_value (d_in -> d_out, "
    "with biases only if qkv_bias) and of out_proj (d_out -> d_out, with a bias)",
    same=lambda got, want: isinstance(got, _NUMBER) and got == want,
    otherwise=lambda got, want, subject: (
        f"it is {got:,}, but the module has {want:,} parameters"
        if isinstance(got, _NUMBER)
        else f"it is {got!r}, not a whole number" + _FORGOT * (got is None)),
    slips=(
        Slip("no-out-bias", _COUNT(_QKV, "d_out * d_out"),
             "the bias of out_proj is missing: out_proj always has d_out biases"),
        Slip("no-out-proj", _COUNT(_QKV, "0"),
             "out_proj (d_out * d_out weights and d_out biases) is not counted"),
        Slip("qkv-bias", (_COUNT("d_in * d_out + d_out", _OUT),
                          _COUNT("d_in * d_out", _OUT)),
             "W_query, W_key, W_value have d_out biases each if qkv_bias=True, else 0"),
        Slip("square", _COUNT(_QKV.replace("d_in", "d_out"), _OUT),
             "W_query, W_key and W_value map d_in to d_out: d_in * d_out weights each"),
        Slip("four-squares", "    return 4 * d_out * d_out + 4 * d_out\n",
             "4 * d_out**2 + 4 * d_out holds only if d_in = d_out and qkv_bias=True"),
        Slip("per-head", (f"    return num_heads * (3 * ({_QKV}) + {_OUT})\n",
                          f"    return num_heads * 3 * ({_QKV}) + {_OUT}\n"),
             "the heads split the outputs of each projection: they add no parameters"),
    ),
)
check_param_count_fn = PARAMS.make_check()


# --- ch05-ex-split: split_heads and merge_heads -------------------------------------
def _split_cases(merge=False):
    """``(x, num_heads)`` for split_heads; with ``merge``, the heads of each x."""
    x, text = torch.arange(48.0).view(2, 3, 8), "torch.arange(48.0).view(2, 3, 8)"
    noise = torch.randn(2, 5, 12, generator=torch.Generator().manual_seed(0))
    cases = ((text, x, 2), (text, x, 4), ("random x of shape (2, 5, 12)", noise, 3))
    if merge:  # the heads of each x, in order in memory as attention gives them
        cases = [(f"the heads of {t}", x.unflatten(-1, (H, -1)).transpose(1, 2)
                  .contiguous(), H) for t, x, H in cases]
    return tuple(Case(f"{t} with num_heads = {H}", (x,) if merge else (x, H))
                 for t, x, H in cases)


_SPLIT = "    B, T, D = x.shape\n    return {}\n".format
SPLIT_HEADS = Exercise(
    label="ch05-ex-split", check="check_head_split", output="split",
    function="split_heads(x, num_heads)", cases=_split_cases,
    right=_SPLIT("x.view(B, T, num_heads, D // num_heads).transpose(1, 2)"),
    rule="(B, T, D) -> (B, H, T, d), head h of each token holding its features h*d to "
    "(h+1)*d - 1, d = D // num_heads",
    slips=(
        Slip("straight", _SPLIT("x.reshape(B, num_heads, T, D // num_heads)"),
             "a reshape straight to (B, H, T, d) cuts the SEQUENCE into H pieces and "
             "mixes tokens: view as (B, T, H, d) first, then .transpose(1, 2)"),
        Slip("no-transpose", _SPLIT("x.view(B, T, num_heads, D // num_heads)"),
             "the heads come after the tokens, (B, T, H, d): add .transpose(1, 2)"),
        Slip("strided",
             _SPLIT("x.view(B, T, D // num_heads, num_heads).permute(0, 3, 1, 2)"),
             "your head h takes every H-th feature (h, h + H, ...), not the features "
             "h*d to (h+1)*d - 1: view as (B, T, H, d), then .transpose(1, 2)"),
        Slip("fixed-heads", _SPLIT("x.view(B, T, 2, D // 2).transpose(1, 2)"),
             "it always makes 2 heads: use the argument num_heads, not a fixed number"),
    ),
)
_MERGE = "    B, H, T, d = x.shape\n    return {}.reshape(B, T, H * d)\n".format
MERGE_HEADS = Exercise(
    label="ch05-ex-split-merge", check="check_head_split", function="merge_heads(x)",
    output="merge", right=_MERGE("x.transpose(1, 2)"), cases=lambda: _split_cases(True),
    rule="(B, H, T, d) -> (B, T, D), the inverse of split_heads",
    slips=(Slip("glued", _MERGE("x"), "gluing (B, H, T, d) straight into (B, T, D) "
                "mixes tokens: transpose back first, x.transpose(1, 2)"),),
)


@exercise_check("split_heads", "merge_heads")
def check_head_split(split_heads, merge_heads):
    """Check split_heads(x, num_heads), (B, T, D) -> (B, H, T, d), and its inverse
    merge_heads(x). Introduced in Chapter 5."""
    tables = ((SPLIT_HEADS, split_heads), (MERGE_HEADS, merge_heads))
    for table, fn in tables:
        require_callable(fn, table.check, table.name)
    with seeded(0):
        for table, fn in tables:
            for case in table.all_cases():
                got = call(fn, table.check, case, who=table.name, fix=table.fix)
                table.verdict(got, case.args, case.description)
    passed("check_head_split", f"split_heads and merge_heads are right on "
           f"{len(_split_cases())} inputs: {SPLIT_HEADS.rule}, and back.")


# --- ch05-ex-shapes: the shapes of the wrapper and of the fused module ---------------
_TRACE = """\
    import attn_course as ac
    args, trace = (d_in, d_out, num_tokens, 0.0, num_heads), ac.ShapeTracer()
    x = torch.zeros(batch_size, num_tokens, d_in)
    wo, ww = ac.MultiHeadAttentionWrapper(*args)(x, return_weights=True)
    fo, fw = ac.MultiHeadAttention(*args)(x, return_weights=True, trace=trace)
    s = {"wrapper output": wo, "wrapper weights": ww, "fused output": fo,
         "fused weights": fw}
    s = {k: tuple(v.shape) for k, v in s.items()} | dict(trace.steps)
    B, T, H, d = batch_size, num_tokens, num_heads, d_out // num_heads
"""
_EACH = 'for k in "queries", "keys", "values": '
_LETTERS = {"x": "B T d_in", "wrapper output": "B T H*d_out", "context": "B H T d",
            "context.transpose": "B T H d", "context.view": "B T D",
            "weights": "B H T T", "view": "B T H d", "transpose": "B H T d"}


def _shapes(*changes):
    """The right shapes, changed by the lines ``changes`` of a wrong prediction."""
    return _TRACE + "".join(f"    {line}\n" for line in changes) + "    return s\n"


def _shapes_wrong(got, expected, subject):
    """Each wrong shape, with the slips that give it, else where it is off."""
    (B, T, d_in), H, D = expected["x"], expected["weights"][1], expected["out_proj"][2]
    args = (d_in, D, H, B, T)
    facts, lines = SHAPES._facts(args), []
    for key, shape in got.items():
        if shape != expected[key]:
            says = dict.fromkeys(slip.says.format(**facts) for slip in SHAPES.slips
                                 if SHAPES.define(slip.body)(*args)[key] == shape)
            step = key if key in _LETTERS else key.rsplit(".")[-1].split()[-1]
            letters = _LETTERS.get(step, "B T D").split()
            why = "; or ".join(says) or shape_mismatch(shape, expected[key], letters)
            lines.append(f"\n  {key!r}: you predicted {shape}: {why}")
    return f"{len(lines)} of {len(got)} shapes are wrong:{''.join(lines)}"


SHAPES = Exercise(
    label="ch05-ex-shapes", check="check_shape_predictions", value=True,
    function="shapes(d_in, d_out, num_heads, batch_size, num_tokens)",
    output="shapes", right=_shapes(), cases=((3, 12, 3, 2, 5), (4, 8, 2, 3, 6)),
    describe="d_in={0}, d_out={1}, num_heads={2} and x of shape ({3}, {4}, {0})".format,
    facts=lambda d_in, d_out, num_heads, B, T: {"d": d_out // num_heads},
    rule="d_out is the width of each head in MultiHeadAttentionWrapper, and the total "
    "width in MultiHeadAttention, cut into heads of d = d_out // num_heads",
    same=lambda got, want: all(want[key] == shape for key, shape in got.items()),
    otherwise=_shapes_wrong,
    slips=(
        Slip("wrapper-total", _shapes('s["wrapper output"] = (B, T, d_out)'),
             "the wrapper's output joins its num_heads heads of d_out features each"),
        Slip("fused-per-head", _shapes('s["fused output"] = (B, T, H * d_out)'),
             "MultiHeadAttention's output has d_out features, the TOTAL of its heads"),
        Slip("no-head-dim", _shapes('s["wrapper weights"] = s["fused weights"] = '
                                    's["weights"] = (B, T, T)'),
             "the weights have a dimension for the heads: one (T, T) matrix per head"),
        Slip("head-width", _shapes(_EACH + 's[k + ".view"] = (B, T, H, d_out)',
                                   _EACH + 's[k + ".transpose"] = (B, H, T, d_out)',
                                   's["context"] = (B, H, T, d_out)',
                                   's["context.transpose"] = (B, T, H, d_out)'),
             "each head of the fused module has d = d_out // num_heads = {d} features"),
        Slip("view-reorders", _shapes(_EACH + 's[k + ".view"] = (B, H, T, d)'),
             "view keeps T in place and cuts D into (H, d); the transpose comes next"),
        Slip("no-swap", _shapes(_EACH + 's[k + ".transpose"] = (B, T, H, d)'),
             "the transpose keeps the order of the view: transpose(1, 2) swaps T, H"),
        Slip("no-swap-back", _shapes('s["context.transpose"] = (B, H, T, d)'),
             "'context.transpose' keeps the order of context: it swaps H and T back"),
    ),
)


@exercise_check("answer")
def check_shape_predictions(answer, *, d_in, d_out, num_heads, batch_size, num_tokens,
                            required=()):
    """Check a dict of shapes ("wrapper output", "fused weights", any step of a
    ShapeTracer) predicted for both modules. Introduced in Chapter 5."""
    sizes = (d_in, d_out, num_heads, batch_size, num_tokens)
    args = tuple(map(require_int, sizes, SHAPES.parameters))
    with seeded(0):  # a ValueError if num_heads does not divide d_out
        keys = SHAPES.define(SHAPES.right)(*args)
    answer = expect_dict(answer, SHAPES.check, "{'fused output': (2, 5, 4)}")
    shapes = {key: as_shape(value) for key, value in answer.items()}
    unknown = [key for key in answer if key not in keys]
    missing = [key for key in required if key not in answer]
    bad = [f"{key!r}: {answer[key]!r}" for key, s in shapes.items() if s is None]
    why = (unknown and f"unknown key(s) {unknown}; use any of {list(keys)}"
           or missing and f"your dict lacks the keys {missing}; predict their shapes"
           or not answer and "your dict is empty; predict at least one shape"
           or bad and f"{', '.join(bad)} is not a shape; write a tuple of ints")
    if why:
        raise AssertionError(f"{SHAPES.check}: {why}.")
    SHAPES.judge_value(shapes, *args)
