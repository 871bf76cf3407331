this is not a model, whatever its name says
