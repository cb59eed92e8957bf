"""Rendering: results into words and pages. The drafts (posts), the carousel's words (slides),
the carousel and GIF files' checks (formats), the review page (review, review_tables), and the
one sandboxed Jinja environment every template renders in (render_env, template_cache)."""
