"""`fcl study scalability` as a script; the study is in
`fcl/studies/scalability.py`, and every flag is the same."""
from fcl.studies.scalability import STUDY
from fcl.tune import main

if __name__ == "__main__":
    main(STUDY)
