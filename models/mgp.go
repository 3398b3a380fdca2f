package models

// MGP needs nothing of its own: the training graph evaluates the latent
// functions at the observed inputs (buildTrain's default case) and
// predictions use the closed-form quadrature at x̃* (predictMarginals).
