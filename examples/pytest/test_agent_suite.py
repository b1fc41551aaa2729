"""Each case of the suite is a test item (named by case id), and [@baseline] gates the run."""

from judge.pytest_plugin import judge_suite

test_agent = judge_suite("suites/agent.yaml")
