"""A test suite written the way a minikafka user writes one: only the plugin's fixtures and confluent-kafka.

It runs in the main suite against the embedded broker, and tests/interop/test_user_suite.py runs it again with
`--minikafka-bootstrap` against Apache Kafka.
"""
