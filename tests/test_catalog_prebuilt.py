"""Vertex's prebuilt training containers as catalog data (trainpool/catalog/prebuilt.py).

Source: the "Prebuilt containers for custom training" page
(https://cloud.google.com/vertex-ai/docs/training/pre-built-containers), copied into
``data/prebuilt_containers.csv`` with every row's source.
"""

from __future__ import annotations

import pytest

from trainpool import catalog
from trainpool.catalog import included as shipped

XGB = "us-docker.pkg.dev/vertex-ai/training/xgboost-cpu.1-1:latest"


def test_each_documented_framework_has_cpu_images_in_three_regions() -> None:
    images = catalog.prebuilt_images()
    for framework in ("tensorflow", "pytorch", "xgboost", "scikit-learn"):
        rows = [i for i in images.values() if i.framework == framework and i.verified]
        regions = {i.uri.split("-docker.pkg.dev", 1)[0] for i in rows}
        assert regions == {"us", "europe", "asia"}, framework
        assert {"cpu", "gpu"} <= {i.accelerator for i in rows} or framework == "scikit-learn"
    assert all(i.uri.endswith(":latest") for i in images.values())


@pytest.mark.parametrize(
    ("uri", "framework", "version", "python"),
    [
        (XGB, "xgboost", "1.1", "3.7"),
        ("us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-8", "tensorflow", "2.8", "3.7"),
        (
            "europe-docker.pkg.dev/vertex-ai/training/tf-cpu.2-8.py310:latest",
            "tensorflow",
            "2.8",
            "3.10",
        ),
        (
            "us-docker.pkg.dev/vertex-ai/training/pytorch-xla.2-4.py310:latest",
            "pytorch",
            "2.4",
            "3.10",
        ),
        (
            "us-docker.pkg.dev/vertex-ai/training/sklearn-cpu.1-6:latest",
            "scikit-learn",
            "1.6",
            "3.10",
        ),
        ("gcr.io/cloud-aiplatform/training/tf-cpu.2-3:latest", "tensorflow", "2.3", "3.7"),
    ],
)
def test_an_image_names_its_framework_version_and_python(
    uri: str, framework: str, version: str, python: str
) -> None:
    image = catalog.prebuilt_image(uri)
    assert image is not None
    assert (image.framework, image.version, image.python) == (framework, version, python)


def test_google_training_images_are_recognised_and_others_are_not() -> None:
    assert catalog.is_google_training_image("us-docker.pkg.dev/vertex-ai/training/nope:latest")
    assert catalog.is_google_training_image("gcr.io/cloud-aiplatform/training/nope:latest")
    assert catalog.is_google_training_image("us.gcr.io/cloud-aiplatform/training/tf-gpu.2-1")
    reducer = "us-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest"
    assert not catalog.is_google_training_image(reducer)
    assert not catalog.is_google_training_image("us-docker.pkg.dev/me/repo/trainer:latest")
    assert catalog.prebuilt_image(XGB.replace(":latest", ":1.1")) is None  # only :latest


def test_closest_known_images_come_first() -> None:
    closest = catalog.closest_prebuilt("us-docker.pkg.dev/vertex-ai/training/xgboost-cpu.1-7")
    assert closest[0] == "us-docker.pkg.dev/vertex-ai/training/xgboost-cpu.1-6:latest"
    assert XGB in closest


def test_suggestions_follow_the_name_cpu_for_a_cpu_name_same_framework_and_version_first() -> None:
    # Vertex's page ("Prebuilt containers for custom training", PyTorch, CPU rows) lists
    # pytorch-xla.2-4.py310 as the CPU image of PyTorch 2.4; there is no pytorch-cpu.2-4
    asked = "us-docker.pkg.dev/vertex-ai/training/pytorch-cpu.2-4.py310"
    closest = catalog.closest_prebuilt(asked)
    assert closest[0] == "us-docker.pkg.dev/vertex-ai/training/pytorch-xla.2-4.py310:latest"
    assert [catalog.prebuilt_image(uri).accelerator for uri in closest] == ["cpu"] * 5
    assert {catalog.prebuilt_image(uri).framework for uri in closest} == {"pytorch"}
    gpu = catalog.closest_prebuilt("europe-docker.pkg.dev/vertex-ai/training/tf-gpu.2-18.py310")
    assert gpu[0] == "europe-docker.pkg.dev/vertex-ai/training/tf-gpu.2-17.py310:latest"
    assert [catalog.prebuilt_image(uri).accelerator for uri in gpu] == ["gpu"] * 5
    # the same version on another registry host comes before another version on this one
    legacy = catalog.closest_prebuilt("gcr.io/cloud-aiplatform/training/tf-cpu.2-8")
    assert legacy[0] == "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-8:latest"
    # a name of another form is matched by its spelling
    assert len(catalog.closest_prebuilt("us-docker.pkg.dev/vertex-ai/training/nope")) == 5


def test_included_packages_are_the_documented_versions() -> None:
    included = {p.package: p.version for p in shipped.included_packages("xgboost", "1.1")}
    assert {
        "numpy": "1.18.5",
        "pandas": "1.0.4",
        "scipy": "1.4.1",
        "scikit-learn": "0.23.1",
        "xgboost": "1.1.1",
    }.items() <= included.items()
    assert shipped.included_packages("tensorflow", "2.17") == ()


def test_scikit_learn_and_xgboost_images_list_every_package_the_page_gives() -> None:
    # The page's "Included dependencies" for these images is their whole PyPI list (no "Other
    # Deep Learning Containers dependencies"): 33 packages with versions, then cloudml-hypertune
    sklearn = {p.package: p.version for p in shipped.included_packages("scikit-learn", "1.0")}
    assert sklearn["scikit-learn"] == "1.0" and sklearn["xgboost"] == "1.6.2"
    assert sklearn["google-cloud-storage"] == "1.29.0" and sklearn["grpcio"] == "1.29.0"
    assert sklearn["webapp2"] == "3.0.0b1" and sklearn["PyYAML"] == "5.3.1"
    assert len(sklearn) == 33 + 1  # and protobuf, which the page leaves out
    for version in ("1.1", "1.6"):
        assert len(shipped.included_packages("xgboost", version)) == 33 + 1
    for framework, version in shipped.documented_versions():
        for package in shipped.included_packages(framework, version):
            assert package.source, (framework, version, package)
