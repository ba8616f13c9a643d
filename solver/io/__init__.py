"""Reading and writing: scene JSON files (:mod:`.scene_io`), solver checkpoints
(:mod:`.checkpoint`) and the command line with its trajectory files (:mod:`.cli`)."""
