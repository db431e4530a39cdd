"""`fcl study drift_correction` as a script; the study is in
`fcl/studies/drift_correction.py`, and every flag is the same."""
from fcl.studies.drift_correction import STUDY
from fcl.tune import main

if __name__ == "__main__":
    main(STUDY)
