"""One result type per command (pure): the core values themselves plus the facts a person needs around
them (model facts, typed assumptions), serialised to JSON by one function (`reports.serialize`)."""
