"""What publishing the website relies on in the GitHub Actions workflow and in
``_config.yml`` (``make lint`` checks the workflows against GitHub's schema)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
WORKFLOW = ROOT / ".github" / "workflows" / "test-and-publish.yml"
ON_MAIN = "github.event_name == 'push' && github.ref == 'refs/heads/main'"


def load(path: Path) -> dict:
    data = yaml.safe_load(path.read_text())
    # YAML 1.1 (PyYAML) reads the key `on` as True.
    if True in data:
        data["on"] = data.pop(True)
    return data


def test_the_tests_run_on_pushes_to_main_and_on_pull_requests():
    workflow = load(WORKFLOW)
    assert workflow["on"]["push"]["branches"] == ["main"]
    assert "pull_request" in workflow["on"]
    assert workflow["permissions"] == {"contents": "read"}
    test = workflow["jobs"]["test"]
    assert "if" not in test
    steps = test["steps"]
    python = [s for s in steps if s.get("uses", "").startswith("actions/setup-python")]
    assert python and python[0]["with"]["python-version"] == "3.11"
    assert [s["run"] for s in steps if "run" in s][0] == "bash .ci/run"


def test_only_a_push_to_main_builds_uploads_and_deploys_the_site():
    jobs = load(WORKFLOW)["jobs"]
    steps = jobs["test"]["steps"]
    build = next(s for s in steps if "make book" in s.get("run", ""))
    assert build["if"] == ON_MAIN
    assert "test -f _build/html/.nojekyll" in build["run"]
    upload = next(
        s
        for s in steps
        if s.get("uses", "").startswith("actions/upload-pages-artifact")
    )
    assert upload["if"] == ON_MAIN
    assert upload["with"] == {"path": "_build/html", "include-hidden-files": True}
    deploy = jobs["deploy"]
    assert deploy["if"] == ON_MAIN
    assert deploy["needs"] == "test"
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert deploy["concurrency"]["group"] == "pages"
    assert deploy["environment"]["name"] == "github-pages"
    assert deploy["steps"][-1]["uses"].startswith("actions/deploy-pages@")


def test_every_action_is_pinned_to_a_major_version_or_a_release():
    for path in WORKFLOWS:
        for job in load(path)["jobs"].values():
            for step in job.get("steps", []):
                if "uses" in step:
                    pin = r"[\w.-]+/[\w.-]+@v\d+(\.\d+\.\d+)?"
                    assert re.fullmatch(pin, step["uses"]), step


def test_the_site_names_its_repository_once_and_ships_a_nojekyll():
    config_text = (ROOT / "_config.yml").read_text()
    config = yaml.safe_load(config_text)
    url = config["repository"]["url"]
    assert re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+", url)
    assert config_text.count("github.com/") == 1
    assert config["repository"]["branch"] == "main"
    assert config["html"]["use_repository_button"] is True
    assert config["html"]["use_issues_button"] is True
    assert "sphinx.ext.githubpages" in config["sphinx"]["config"]["extensions"]


def test_a_push_to_main_pushes_the_portable_notebooks_to_the_colab_branch():
    """Only a push to main fills the Colab branch, from a job writing nothing else."""
    jobs = load(WORKFLOW)["jobs"]
    test, notebooks = jobs["test"], jobs["notebooks"]
    name = next(s for s in test["steps"] if s.get("id") == "portable")
    assert name["if"] == ON_MAIN
    assert ".venv/bin/python -m tools.portable branch" in name["run"]
    assert test["outputs"]["notebooks-branch"] == "${{ steps.portable.outputs.branch }}"
    upload = next(
        s for s in test["steps"] if s.get("uses", "").startswith("actions/upload-art")
    )
    assert upload["if"] == ON_MAIN
    assert upload["with"]["path"] == "_build/html/_sources/chapters/*.ipynb"
    assert notebooks["if"] == ON_MAIN
    assert notebooks["needs"] == "test"
    assert notebooks["permissions"] == {"contents": "write"}
    download, push = notebooks["steps"]
    assert download["uses"].startswith("actions/download-artifact@")
    assert download["with"] == {
        "name": upload["with"]["name"],
        "path": "notebooks/chapters",
    }
    assert push["env"]["BRANCH"] == "${{ needs.test.outputs.notebooks-branch }}"
    assert '"HEAD:refs/heads/${BRANCH}"' in push["run"]
    writers = [n for n, job in jobs.items() if "contents" in job.get("permissions", {})]
    assert writers == ["notebooks"]
