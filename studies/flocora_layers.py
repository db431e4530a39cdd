"""`fcl study flocora_layers` as a script; the study is in
`fcl/studies/flocora_layers.py`, and every flag is the same."""
from fcl.studies.flocora_layers import STUDY
from fcl.tune import main

if __name__ == "__main__":
    main(STUDY)
