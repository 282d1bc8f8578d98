"""Share groups (KIP-932): the sans-IO delivery state of share partitions and its persisted form."""
