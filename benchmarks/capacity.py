"""Capacity plan arithmetic: cluster size and hours for the WDC 2023-12 release and for evaluating
1 million pages with an 8B model on H100/H200-class GPUs (the model and its measured inputs:
``testkit.capacity``).

    .venv/bin/python benchmarks/capacity.py                # the tables of docs/capacity.md (Markdown)
    .venv/bin/python benchmarks/capacity.py --update-doc   # write them into docs/capacity.md
    .venv/bin/python benchmarks/capacity.py --measure OUT  # the evaluation inputs of an evaluate run
                                                           # into OUT (empty request cache; model served)
"""

import sys

from testkit.capacity import main

if __name__ == "__main__":
    sys.exit(main())
