pytest_plugins = ["tests.lab.pytest_plugin"]
