"""minikafka.broker.handlers package."""
