# A worker that writes its environment as JSON to DIR/env.RANK.json and,
# when RAISE_ON_RANK is its rank, raises from a main wrapped in torch's
# @record (which writes the exception into TORCHELASTIC_ERROR_FILE); the
# other ranks then wait to be ended, as ranks in a collective would.
import json
import os
import sys
import time

from torch.distributed.elastic.multiprocessing.errors import record


@record
def main():
    rank = os.environ["RANK"]
    with open(os.path.join(sys.argv[1], "env.%s.json" % rank), "w") as f:
        json.dump(dict(os.environ), f)
    if os.environ.get("RAISE_ON_RANK") == rank:
        raise ValueError("rank %s cannot go on: bad shard 7" % rank)
    if os.environ.get("RAISE_ON_RANK"):
        time.sleep(60)


main()
