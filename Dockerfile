# The components image: what the components import of trainpool (nothing of the CLI, the
# emulator, kfp.local's runner or the redirect), installed at the exact versions of
# constraints.txt. Every trainpool component runs in it. Built and pushed by `trainpool
# publish`, which writes the .dockerignore that keeps exactly those files (followed import by
# import from the components' sources: trainpool.images.imports) and compiles the YAML against
# the image's digest. So the digest changes only when code the components run, pyproject.toml
# or constraints.txt do; the long description pip wants is a stub here, so README edits do not
# make a new image either.
FROM python:3.11-slim
WORKDIR /opt/trainpool
COPY pyproject.toml constraints.txt ./
COPY trainpool ./trainpool
RUN printf 'trainpool: see https://pypi.org/project/trainpool\n' > README.md \
 && python3 -m pip install --no-cache-dir -c constraints.txt .
WORKDIR /
