"""`fcl study flocora_compare` as a script; the study is in
`fcl/studies/flocora_compare.py`, and every flag is the same."""
from fcl.studies.flocora_compare import STUDY
from fcl.tune import main

if __name__ == "__main__":
    main(STUDY)
