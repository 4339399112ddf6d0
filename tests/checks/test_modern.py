"""Chapter 11's checks beyond their tables (tests/test_tables.py): the right answers
agree with PyTorch and with a plain loop."""

import math

import torch
import torch.nn.functional as F

from attn_course.checks.modern import BLOCKS, RMS_NORM, SINK


def test_the_right_rms_norm_is_pytorchs():
    rms_norm = RMS_NORM.define(RMS_NORM.right)
    for case in RMS_NORM.all_cases():
        x, weight, eps = case.args
        expected = F.rms_norm(x, (x.shape[-1],), weight, eps)
        # float32, the same operations in another order: a few units in the last place
        torch.testing.assert_close(rms_norm(x, weight, eps), expected)


def test_the_right_sink_weights_are_a_softmax_with_one_more_column():
    sink_weights = SINK.define(SINK.right)
    for case in SINK.all_cases():
        scores, sink = (a.double() for a in case.args)
        got = sink_weights(scores, sink)
        for h, rows in enumerate(scores):
            for i, row in enumerate(rows):
                terms = [math.exp(s) for s in row.tolist()]
                total = sum(terms) + math.exp(sink[h].item())
                expected = torch.tensor([t / total for t in terms], dtype=torch.double)
                # float64 against Python's floats: rounding only
                torch.testing.assert_close(got[h, i], expected, atol=1e-12, rtol=1e-12)


def test_the_right_block_count_fills_each_sequence_block_by_block():
    blocks_needed = BLOCKS.define(BLOCKS.right)
    for case in BLOCKS.all_cases():
        lengths, block_size = case.args
        count = 0
        for n in lengths:
            free = 0
            for _ in range(n):
                if free == 0:
                    count, free = count + 1, block_size
                free -= 1
        assert blocks_needed(lengths, block_size) == count
