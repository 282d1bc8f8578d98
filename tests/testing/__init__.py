"""Tests of minikafka.testing: MiniKafka and the pytest plugin."""
