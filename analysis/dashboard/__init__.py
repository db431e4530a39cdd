"""The interactive dashboard (plotly), one offline HTML page: `page` (the page and the
`python -m analysis dashboard` command), `views` (what each study shows, from its manifest),
`charts` (a grid study's charts), `search` (a search's), `methods` (a comparison of methods)."""
