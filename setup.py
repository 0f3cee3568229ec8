"""pip install .: the C library built by the Makefile (`make all`, in the
build tree $UBGEN_BUILD, default build/, so a built tree is reused), then
packed into the package beside the Python code: ubgen/lib/libubgen.so,
ubgen/share/ubgen/{specs,templates} (where the library looks for its data:
<its dir>/../share/ubgen), and ubgen/_install.py naming the library.
Everything else is in pyproject.toml."""
import glob
import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = os.path.dirname(os.path.abspath(__file__))


class BuildWithMake(build_py):
    def run(self):
        super().run()
        build = os.environ.get("UBGEN_BUILD", "build")
        jobs = "-j%d" % (os.cpu_count() or 1)
        subprocess.run(["make", "-C", ROOT, jobs, "BUILD=" + build, "all"], check=True)
        if self.editable_mode:  # the source tree's package finds build/lib itself
            return
        pkg = os.path.join(self.build_lib, "ubgen")
        os.makedirs(os.path.join(pkg, "lib"), exist_ok=True)
        shutil.copyfile(os.path.join(ROOT, build, "lib", "libubgen.so"), os.path.join(pkg, "lib", "libubgen.so"))
        for sub, pattern in (("specs", "specs/*.json"), ("specs", "specs/*_ref.c"), ("templates", "templates/*")):
            dest = os.path.join(pkg, "share", "ubgen", sub)
            os.makedirs(dest, exist_ok=True)
            for f in glob.glob(os.path.join(ROOT, pattern)):
                if not f.endswith("vops.c"):
                    shutil.copyfile(f, os.path.join(dest, os.path.basename(f)))
        with open(os.path.join(pkg, "_install.py"), "w") as out:
            out.write('"""written by pip install: where the library is"""\nimport os\n\n'
                      'LIB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib", "libubgen.so")\n')


setup(cmdclass={"build_py": BuildWithMake}, options={"build": {"build_base": "build/pip"}})
