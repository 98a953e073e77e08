"""Install the repository's top-level folders under one namespace, `knowledge_mcp`.

DESIGN §1 keeps `server/`, `sources/` and `aggregator/` at the top of the repository, and the
benchmark beside them in `bench/`; they are installed as `knowledge_mcp.server`,
`knowledge_mcp.sources`, `knowledge_mcp.aggregator` and `knowledge_mcp.bench`, so nothing named
`server` or `sources` lands in site-packages. Every subpackage is found here, so a
new one needs no entry anywhere. The sample data of `fixtures/` (the five sources' folders, not
`broken/`) is installed as `knowledge_mcp/fixtures`, so `knowledge-mcp demo` runs from a wheel
too. All other metadata is in pyproject.toml.
"""

from setuptools import find_namespace_packages, find_packages, setup

FOLDERS = ("server", "sources", "aggregator", "bench")

packages = ["knowledge_mcp"]
package_dir = {"knowledge_mcp": "knowledge_mcp"}
for folder in FOLDERS:
    package_dir[f"knowledge_mcp.{folder}"] = folder
    packages.append(f"knowledge_mcp.{folder}")
    packages += [f"knowledge_mcp.{folder}.{sub}" for sub in find_packages(where=folder)]

# the sample data's folders are namespace packages of data files ([tool.setuptools.package-data])
SAMPLES = ("notes", "media", "chats", "characters", "prompts")
package_dir["knowledge_mcp.fixtures"] = "fixtures"
packages.append("knowledge_mcp.fixtures")
packages += [
    f"knowledge_mcp.fixtures.{sub}"
    for sub in find_namespace_packages(where="fixtures")
    if sub.split(".")[0] in SAMPLES
]

setup(packages=packages, package_dir=package_dir)
