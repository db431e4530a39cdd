"""`fcl study flocora_rank_alpha` as a script; the study is in
`fcl/studies/flocora_rank_alpha.py`, and every flag is the same."""
from fcl.studies.flocora_rank_alpha import STUDY
from fcl.tune import main

if __name__ == "__main__":
    main(STUDY)
