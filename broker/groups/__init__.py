"""minikafka.broker.groups package."""
