"""The continual methods, one folder each (`fcl/methods/<name>/`: its modules and, in its
`__init__.py`, its `Method` value); `fcl.methods.registry` is the table of them and
`fcl.methods.contract` what each one gives."""
