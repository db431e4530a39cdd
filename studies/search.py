"""`fcl study search` as a script; the study is in
`fcl/studies/search.py`, and every flag is the same."""
from fcl.studies.search import STUDY
from fcl.tune import main

if __name__ == "__main__":
    main(STUDY)
