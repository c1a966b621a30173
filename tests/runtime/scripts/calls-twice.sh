# child.test: a -c command that forks twice and exits 3:
# calls-twice.sh TARGETS
"$1"/ubt-calls 1
"$1"/ubt-calls 1
exit 3
