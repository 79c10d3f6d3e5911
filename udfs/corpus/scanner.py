"""The project's JVM code (udfs/corpus/jvm/**.java): compiled on first use, attached to a running Spark.

Why not a jar in the repository: a binary nobody can review. The sources are compiled with the
JDK's ``javac`` against the Spark jars of the installed pyspark into a jar named by the hash of
the sources and the Spark version, cached under ``$XDG_CACHE_HOME/llm4schema/jvm`` (or
``$LLM4SCHEMA_JVM_DIR``); a source change makes a new jar, never a stale one.

Attaching works the same under ``spark-submit job.py`` and ``python job.py`` (both start the JVM
through SparkSubmit, whose context class loader can take more jars): the jar is added to the
driver's class loader, and ``SparkContext.addJar`` ships it to the executors of a cluster.
Prebuilt jars can be passed with ``--jars`` instead; attaching then finds the class and does
nothing.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

SOURCES = Path(__file__).resolve().parent / "jvm"


class JvmBuildError(RuntimeError):
    pass


def cache_dir() -> Path:
    if os.environ.get("LLM4SCHEMA_JVM_DIR"):
        return Path(os.environ["LLM4SCHEMA_JVM_DIR"])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "llm4schema" / "jvm"


def _spark_jars() -> Path:
    """Spark's jars, to compile against. Under spark-submit pyspark is imported from a zip inside
    SPARK_HOME (python/lib/pyspark.zip), so SPARK_HOME comes first; then the installed package."""
    import pyspark

    places = [Path(os.environ["SPARK_HOME"]) / "jars"] if os.environ.get("SPARK_HOME") else []
    places.append(Path(pyspark.__file__).resolve().parent / "jars")
    for jars in places:
        if any(jars.glob("spark-sql_*.jar")):
            return jars
    raise JvmBuildError(f"Spark's jars not found in {', '.join(map(str, places))}: set SPARK_HOME")


def _sources() -> list[Path]:
    return sorted(SOURCES.rglob("*.java"))


def jar_path() -> Path:
    """The jar for the current sources and Spark version, built when missing."""
    import pyspark

    h = hashlib.sha256(pyspark.__version__.encode())
    for src in _sources():
        h.update(str(src.relative_to(SOURCES)).encode())
        h.update(src.read_bytes())
    jar = cache_dir() / f"llm4schema-jvm-{h.hexdigest()[:16]}.jar"
    if not jar.exists():
        build(jar)
    return jar


def build(jar: Path) -> None:
    javac = shutil.which("javac") or (
        Path(os.environ["JAVA_HOME"]) / "bin" / "javac" if os.environ.get("JAVA_HOME") else None
    )
    if not javac or not Path(javac).exists():
        raise JvmBuildError(
            "javac not found: the C-sets scanner is Java compiled on first use; install a JDK 17 "
            "(or pass a prebuilt jar with spark-submit --jars)"
        )
    jar.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=jar.parent) as tmp:
        classes = Path(tmp) / "classes"
        cmd = [
            str(javac),
            "--release",
            "17",
            "-nowarn",
            "-cp",
            str(_spark_jars() / "*"),
            "-d",
            str(classes),
            *map(str, _sources()),
        ]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            raise JvmBuildError(f"javac failed ({res.returncode}):\n{res.stderr[-4000:]}")
        partial = Path(tmp) / jar.name
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nCreated-By: llm4schema\n\n")
            for f in sorted(classes.rglob("*.class")):
                z.write(f, f.relative_to(classes).as_posix())
        os.replace(partial, jar)  # atomic: concurrent first runs never see half a jar


def attach(spark, class_name: str = "llm4schema.EntityPageScan"):
    """Make ``class_name`` loadable on the driver and the executors; returns its py4j handle."""
    jvm = spark.sparkContext._jvm
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    try:
        jvm.java.lang.Class.forName(class_name, False, loader)
    except Exception:  # noqa: BLE001 - not there yet (py4j wraps ClassNotFoundException)
        jar = jar_path()
        try:
            loader.addURL(jvm.java.io.File(str(jar)).toURI().toURL())
        except Exception as e:  # not a MutableURLClassLoader: a launcher other than SparkSubmit
            raise JvmBuildError(
                f"cannot add {jar} to the driver's class loader ({loader.getClass().getName()}); "
                f"pass it with spark-submit --jars {jar}"
            ) from e
        spark.sparkContext._jsc.addJar(str(jar))
    handle = jvm
    for part in class_name.split("."):
        handle = getattr(handle, part)
    return handle
