"""`fcl study ablation_rounds_epochs` as a script; the study is in
`fcl/studies/ablation_rounds_epochs.py`, and every flag is the same."""
from fcl.studies.ablation_rounds_epochs import STUDY
from fcl.tune import main

if __name__ == "__main__":
    main(STUDY)
