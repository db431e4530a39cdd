"""`fcl study ablation_lr` as a script; the study is in
`fcl/studies/ablation_lr.py`, and every flag is the same."""
from fcl.studies.ablation_lr import STUDY
from fcl.tune import main

if __name__ == "__main__":
    main(STUDY)
