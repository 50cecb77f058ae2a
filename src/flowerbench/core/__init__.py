"""The small common core every stage stands on: params (config), paths, atomic io, the records read
back, logging, what every command does (entry), deadlines, fault points, the result schema,
provenance, the host, the held protocol, Student's t, the import closure, dvc.lock upkeep.
Imports nothing above it."""
