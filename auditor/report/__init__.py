"""Reports: terminal (rich), HTML, Markdown, JSON."""
