# join() cases (functions.test): exec a command with known arguments
# from the traced process itself, after the probes are attached.
sleep 0.3
exec /bin/echo ubt-join a "b c" >/dev/null
