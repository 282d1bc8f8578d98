"""Tests of docker/: the Grafana dashboard and provisioning against a live broker; no Docker engine needed."""
