"""`fcl study flocora_quantization` as a script; the study is in
`fcl/studies/flocora_quantization.py`, and every flag is the same."""
from fcl.studies.flocora_quantization import STUDY
from fcl.tune import main

if __name__ == "__main__":
    main(STUDY)
