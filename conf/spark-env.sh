# Sourced by Spark's launch scripts (bin/load-spark-env.sh) when SPARK_CONF_DIR is this folder: under
# `SPARK_CONF_DIR=conf spark-submit`, and for the JVM a job started with `python jobs/X.py` or an
# installed command starts itself (udfs/runtime/job.py sets SPARK_CONF_DIR unless the caller did).
#
# Spark's launcher always gives the driver JVM `--add-modules=jdk.incubator.vector`, and the JVM
# then prints "WARNING: Using incubator modules: jdk.incubator.vector" before any logging starts.
# The user cannot act on it, so it goes to the JVM's log file (the job's <job>.jvm.log, named by
# LLM4SCHEMA_JVM_LOG, else log4j2.properties' default) and not to the console. Only the first line
# of stderr is looked at; everything after it passes through unchanged, byte for byte (cat), so
# Spark's progress bar and errors reach the console as before.
_llm4schema_jvm_log="${LLM4SCHEMA_JVM_LOG:-${TMPDIR:-/tmp}/llm4schema-spark.log}"
exec 2> >(
  IFS= read -r line || { [ -n "$line" ] && printf '%s' "$line"; exit 0; }
  case "$line" in
    *"Using incubator modules"*) printf '%s\n' "$line" >> "$_llm4schema_jvm_log" 2>/dev/null || true ;;
    *) printf '%s\n' "$line" ;;
  esac
  exec cat
)
