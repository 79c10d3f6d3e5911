"""Local multi-node rehearsal: a Spark standalone master with workers and a Ray head with a second
node, all on the loopback of one machine, started and stopped as context managers (tests and by
hand). They run the same job files, with the same flags, as a real cluster."""
