"""Golden index logic of Subset, ConcatDataset and random_split for test/dataset-wrappers.test.ts.

- random_split: the length of each split PyTorch (>= 1.13: fractions allowed) makes for several
  dataset lengths and `lengths` (counts or fractions; the remainder of fractions handed out
  round-robin), or that it refuses them. The permutation is not recorded: flodl draws it from its
  own generator (src/data/random.ts), not from torch.Generator.
- ConcatDataset: cumulative_sizes and, for every index, which dataset and which of its indices.
- Subset: which index of the wrapped dataset each of its indices reads.

Regenerate with Debian's PyTorch (python3-torch):
    /usr/bin/python3 scripts/make-goldens-data.py
"""
import os
import sys
import warnings

import torch
from torch.utils.data import ConcatDataset, Subset, random_split

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testing", "python"))
from flodl_goldens import fixtures_dir, write_json  # noqa: E402

SPLITS = [
    (10, [3, 7]),
    (10, [0, 10]),
    (10, [1]),
    (30, [0.3, 0.3, 0.4]),
    (11, [0.3, 0.3, 0.4]),
    (10, [0.1] * 10),
    (7, [0.5, 0.5]),
    (5, [0.25, 0.25, 0.25, 0.25]),
    (100, [0.8, 0.1, 0.1]),
    (3, [0.9, 0.1]),
    (13, [1 / 3, 1 / 3, 1 / 3]),
    (1000, [0.7, 0.2, 0.1]),
    (9, [0.2, 0.2, 0.2, 0.2, 0.2]),
    (10, [3, 6]),
    (10, [-0.5, 1.5]),
    (10, [0.5, 0.6]),
]
CONCAT = [3, 0, 5, 1]
SUBSET = (10, [7, 2, 2, 9, 0])


def split_case(total, lengths):
    try:
        parts = random_split(range(total), lengths, generator=torch.Generator().manual_seed(0))
        return {"total": total, "lengths": lengths, "expected": [len(part) for part in parts]}
    except ValueError as error:
        return {"total": total, "lengths": lengths, "error": str(error)}


def main():
    warnings.filterwarnings("ignore")
    datasets = [[(d, i) for i in range(length)] for d, length in enumerate(CONCAT)]
    concat = ConcatDataset(datasets)
    total, indices = SUBSET
    subset = Subset(list(range(total)), indices)
    fixture = {
        "torch": torch.__version__,
        "splits": [split_case(total, lengths) for total, lengths in SPLITS],
        "concat": {
            "lengths": CONCAT,
            "cumulativeSizes": concat.cumulative_sizes,
            "locations": [list(concat[g]) for g in range(len(concat))],
        },
        "subset": {"total": total, "indices": indices, "reads": [subset[k] for k in range(len(subset))]},
    }
    path = os.path.join(fixtures_dir(__file__), "data-wrappers.json")
    write_json(path, fixture)
    print(f"wrote {path}: {len(SPLITS)} splits")


if __name__ == "__main__":
    main()
