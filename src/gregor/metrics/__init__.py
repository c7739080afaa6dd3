"""Prometheus metrics of a broker: Kafka's key metrics under the names the JMX exporter gives them."""
