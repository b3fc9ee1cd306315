"""Real-browser tests: JupyterLab in headless Chromium, driven through Playwright."""
