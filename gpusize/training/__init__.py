"""Training and fine-tuning (pure): the job (`setup`), layer anatomy and LoRA (`anatomy`), model states
(`states`), activations (`activations`), the per-GPU peak (`peak`) and time and cost (`time_cost`).
Nothing is looked up per model: every number follows from the config."""
