# Debian's torchrun (torch 1.13 on Python 3.11) crashes in to_map before it
# starts a worker: Std.from_str("0") finds no member of the IntFlag (3.11
# leaves 0-valued members out of iteration) and returns None. This runs
# torch.distributed.run with that one function taught to read None as
# Std.NONE, and nothing else changed.
import sys

import torch.distributed.elastic.multiprocessing as mp
import torch.distributed.elastic.multiprocessing.api as api

_to_map = api.to_map


def to_map(val_or_map, local_world_size):
    if val_or_map is None:
        val_or_map = api.Std.NONE
    return _to_map(val_or_map, local_world_size)


api.to_map = mp.to_map = to_map

from torch.distributed.run import main  # noqa: E402

sys.exit(main())
