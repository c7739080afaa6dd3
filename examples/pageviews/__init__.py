"""Website activity tracking on Gregor and Spark: page-view events (JSON) go into a topic, a
Structured Streaming job counts views and unique users per page in one-minute event-time windows
and writes each closed window to a Gregor topic and to Parquet; invalid events go to a dead-letter
topic. `python -m examples.pageviews run` runs all of it against a fresh single-node broker.
"""
