# child.test: a -c command that ignores SIGTERM (ubt must SIGKILL it).
trap "" TERM
sleep 30
