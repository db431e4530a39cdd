"""`fcl study task_order` as a script; the study is in
`fcl/studies/task_order.py`, and every flag is the same."""
from fcl.studies.task_order import STUDY
from fcl.tune import main

if __name__ == "__main__":
    main(STUDY)
