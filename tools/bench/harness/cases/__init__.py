"""Benchmark cases. Each module defines CASE, a Case (base.py)."""
from . import (apps, buffered, gap, graph, memory, metadata, perdrive, rand4k, scaling, seq, shapecheck,
               smallread, smoke, stripe)

ALL = [smoke.CASE, shapecheck.CASE, rand4k.CASE, seq.CASE, smallread.CASE, scaling.CASE, stripe.CASE, buffered.CASE,
       metadata.CASE, apps.CASE, graph.CASE, gap.CASE, memory.CASE, perdrive.CASE]
