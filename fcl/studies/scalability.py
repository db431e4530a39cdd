"""Fig. 5c of the FCL paper: the number of clients N (all sampled every round).

The paper gives no axis values; N = 5 is its default (Table 2).
"""
from fcl.tune import Study, grid

SPACE = {"data.num_clients": grid(5, 10, 20, 40)}
SMALL = {"smoke": {"data.num_clients": grid(2, 4)}}   # smoke tasks hold 40 training images

STUDY = Study("scalability", SPACE, by_preset=SMALL, doc=__doc__)
