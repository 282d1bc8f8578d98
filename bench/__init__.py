"""Reproducible benchmarks and the Apache Kafka harness they (and the interop tests) run side by side."""
