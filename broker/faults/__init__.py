"""The fault layer: wire-level faults a test injects into a running broker (DESIGN.md "The fault layer").

`fault_names` reads Kafka's API and error names, `fault_state` owns the faults and applies them to requests,
`fault_routes` serves them on the admin port (`/admin/faults/*`), `fault_client` is the stdlib client of those
routes behind `MiniKafka.faults` and `fault_cli` the `minikafka faults` command. Importing this package imports
none of them.
"""
